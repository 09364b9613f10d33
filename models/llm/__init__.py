"""The LLM panel (docs/llm.md): prompts from the stored tuples, providers behind one
interface, a response cache, strict parsing and the rebuild of the 23 derived items.
Forecasts come back in reported units; the warehouse standardizes them."""
