"""Questions that rules and their fixes share: the rule context, where and when a program
trains, its determinism state, where a fix goes and which seed it uses."""
