"""The Gemini API through the google-genai SDK: the client, its transport and errors, models and
prices, the token budget, explicit caching and the warm-up.

May import: `engine`, `messages`.
"""
