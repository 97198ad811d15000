"""Training code (the reader's ranker); nothing at query time imports this package."""
