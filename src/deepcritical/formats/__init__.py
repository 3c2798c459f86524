"""Bibliographic file formats read by both the search sources and the local corpus: PubMed XML
(:mod:`.pubmed_xml`, E-utilities ``efetch`` answers and PubMed baseline files), JATS full-text
articles (:mod:`.jats`), the MathML both embed (:mod:`.mathml`) and the hardened lxml settings
both read with (:mod:`.safe_xml`); and the reference-manager formats a run's references are
exported in, RIS, BibTeX and CSL-JSON (:mod:`.references`)."""
