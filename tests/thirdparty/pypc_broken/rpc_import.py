"""A method group whose module fails to import."""

raise ImportError("rpc-import-boom")
