"""Python side of rmsnorm-certified: the HTML report of a certificate directory."""
