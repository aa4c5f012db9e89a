"""The fix engine: rules describe edits as data (`edits`), one engine applies them."""
