"""agentsrc: a local record of what coding agents do on this machine."""

__version__ = "0.1.0"
