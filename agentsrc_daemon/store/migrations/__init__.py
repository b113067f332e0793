"""The schema's versions: the migrations registered by name and version
(``registry``, ``versions``; the chunked ones' bodies in ``chunked``) and the runner
that brings a store to the current version (``runner``)."""
