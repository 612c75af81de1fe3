"""Arrow Flight's and Flight SQL's protobuf messages, as protoc generates them.

``Flight.proto`` and ``FlightSql.proto`` are Apache Arrow's ``format/`` files of the
release apache-arrow-25.0.1; ``Flight_pb2`` and ``FlightSql_pb2`` (with their ``.pyi``
stubs) are generated from them by ``generate.sh`` (protoc 31.1, code for protobuf 6.31.1
and later) and committed as generated: edit neither, regenerate instead.
"""
