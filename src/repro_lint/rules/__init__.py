"""The rules: one module per family (RPL1xx seeding, RPL2xx processes, RPL3xx data loading,
RPL4xx determinism), each rule a function registered with `registry.rule`.

Rules read facts and the project index through `analysis.context.Context`; the extraction
plug-ins their facts need are in `facts/families/`.
"""
