// QuireSync: see README.md
