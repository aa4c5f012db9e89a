"""What each file says, from one walk over its syntax tree (`walker/`), with the rule
families' plug-ins (`families/`); many files at once (`batch`), kept compactly (`model`,
`spill`, `shared_values`)."""
