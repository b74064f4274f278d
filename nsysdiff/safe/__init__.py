"""Meeting untrusted input and output safely: linear-time regexes, a bounded YAML reader, neutralised text and JSON."""
