"""Libraries with no Django models: the LLM client and the embedder.

Nothing here imports Django or any app; the apps pass settings in.
"""
