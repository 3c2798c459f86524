"""Bibliographic file formats read by both the search sources and the local corpus: PubMed XML
(:mod:`.pubmed_xml`, E-utilities ``efetch`` answers and PubMed baseline files), JATS full-text
articles (:mod:`.jats`) and the MathML both embed (:mod:`.mathml`)."""
