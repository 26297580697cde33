"""The use cases, over an engine's store: assemble a window, replay and inspect it, load a scenario, write and
erase memories, count a tenant's rows."""
