"""The run's evidence: identifiers (PMID, PMCID, DOI, NCT ID, URL), the evidence store (dedup by
identifier and by embedding, MMR selection), embeddings, rank fusion (RRF), study design and
grading, key sentences of an item and the compressed digest of items shown to models."""
