"""The socket: JSON-RPC transport, the methods, and a client."""
