"""Adapters for the frameworks agents are already written with, each a thin layer over ctxasm.api
(docs/adapters.md): `mem0` (a Mem0-compatible `Memory`), `langgraph_store` (a LangGraph `BaseStore`, the
`langgraph` extra) and `openai_agents` (the OpenAI Agents SDK's model-input hook, the `agents` extra). Import the
one you need; each imports its framework only when imported itself."""
