"""The IPython face: the magics, their flags and options, the per-shell state, the %gemini commands.

The top layer. May import: `turn`, `engine`, `sources`, `gemini`, `frontends`, `persistence`, `ui`,
`messages`.
"""
