"""The shared evidence store: identifiers, dedup, embeddings, diverse selection."""
