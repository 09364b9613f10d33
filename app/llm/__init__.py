"""The LLM panel's warehouse side: the `llm` footprint (its sampler) and the
`proforma run llm` flow (docs/llm.md)."""
