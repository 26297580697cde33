"""What a person uses: the `ctxasm` command and the manifest inspector."""
