"""The OpenAI Agents SDK adapter, under the adapters package with the others: `ContextAssembly` and its helpers
live in ctxasm.agent.openai_agents (docs/agents-sdk.md); the `agents` extra."""

from ctxasm.agent.openai_agents import *  # noqa: F401,F403
from ctxasm.agent.openai_agents import ContextAssembly  # noqa: F401
