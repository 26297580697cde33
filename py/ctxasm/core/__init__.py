"""The pure core: token counting, the budget, tier fitting, rendering, composing a window and its manifest.

Nothing here reads or writes a database, calls a model or keeps time: the same selection always gives the same
request bytes. Every other layer imports this one; it imports only ctxasm.errors.
"""
