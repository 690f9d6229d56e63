"""Embedders, the Example record, durable stores, FAISS retrieval, the P-RAG trajectory database."""
