#!/usr/bin/env bash
# Regenerates Flight_pb2.py and FlightSql_pb2.py (and their .pyi stubs) from the .proto files
# beside this script, which are Apache Arrow's format/Flight.proto and format/FlightSql.proto
# as of the release apache-arrow-25.0.1 (unchanged since, up to Arrow's main of August 2026).
#
# The committed code was made with protoc 31.1 (grpcio-tools 1.74.0), whose Python code runs
# on protobuf 6.31.1 and later (pyproject.toml's bound); a newer protoc makes code that needs
# a newer runtime, so keep this one unless the bound moves with it:
#
#   python -m venv /tmp/protoc && /tmp/protoc/bin/pip install grpcio-tools==1.74.0
#   PYTHON=/tmp/protoc/bin/python bamql/server/proto/generate.sh
set -euo pipefail
cd "$(dirname "$0")"
"${PYTHON:-python}" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. Flight.proto FlightSql.proto
