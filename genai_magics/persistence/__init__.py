"""Where a notebook's conversations outlive the kernel: the record file, its lock, replay.

May import: `engine`, `messages`.
"""
