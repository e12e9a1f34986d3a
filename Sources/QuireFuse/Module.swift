// QuireFuse: see README.md
