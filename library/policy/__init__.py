"""The policy screen: its rules (patterns and the meaning layer of concepts/), the write gate that applies
them to every stored version (screening), and the labelled set it is measured on (screen_set, data/)."""
