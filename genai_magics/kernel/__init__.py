"""The IPython face: the magics, their flags and options, the per-shell state, the %gemini commands."""
