"""The agent side: the Memory Manager's tools from toolbox rows, the MCP server, the agent loop and the model
clients it calls."""
