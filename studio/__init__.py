"""Memory Studio: look inside a Mastra agent's memory.db (threads, messages, Observational Memory)."""

__version__ = "0.1.0"
