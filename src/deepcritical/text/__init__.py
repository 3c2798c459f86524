"""Text processing that needs no model: sentence splitting (:mod:`.sentences`), key terms of a
question (:mod:`.terms`) and a question turned into a claim (:mod:`.claims`)."""
