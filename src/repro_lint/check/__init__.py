"""Running a check: files, facts (cached, in parallel), index, rules, selection; and a
project held in memory for editors (`workspace`)."""
