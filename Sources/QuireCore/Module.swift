// QuireCore: see README.md
