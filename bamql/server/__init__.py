"""The Flight SQL server (``bamql serve``): its one-line errors, query limits and file roots, and
the protocol's generated messages.
"""
