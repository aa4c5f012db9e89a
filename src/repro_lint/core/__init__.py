"""The vocabulary every layer shares: findings, edits, the rule catalogs, bounded reads.

Nothing here imports another part of the package."""
