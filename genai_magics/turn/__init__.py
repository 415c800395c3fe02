"""A turn from request to record: its request types, the document it is about, the clients, the pipeline.

Every layer of the protocol, none of what the user sees (no UI toolkit).
May import: `engine`, `sources`, `gemini`, `frontends`, `persistence`, `messages`.
"""
