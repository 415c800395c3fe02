"""Extra context for a turn, read in the kernel: the last error, variables, what cells showed, and the
read-only functions the model may call for them, each bounded in time.

May import: `engine`, `messages`.
"""
