// QuireRelay: see README.md
