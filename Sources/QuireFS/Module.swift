// QuireFS: see README.md
