"""The night: the fallback ladder, what it reads of the show, and what each level changes."""
