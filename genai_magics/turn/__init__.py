"""A turn from request to record: its request types, the document it is about, the clients, the pipeline."""
