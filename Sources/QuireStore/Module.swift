// QuireStore: see README.md
