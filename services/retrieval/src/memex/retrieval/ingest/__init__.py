"""Vault ingestion: scanning, Markdown parsing, chunking, records files, the indexer."""
