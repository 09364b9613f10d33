"""Footprints: named, versioned cell sets that scores are tied to. Records, predicates and
temp tables (store), creating one (create), the standard three (standard), the LLM
protocol's sample (llm) and published sample masks (mask_import)."""
