"""Bibliographic file formats read by both the search sources and the local corpus: PubMed XML
(:mod:`.pubmed_xml`, E-utilities ``efetch`` answers and PubMed baseline files)."""
