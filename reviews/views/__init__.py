"""The pages of the review workspace, one module per page family: queue, versions (the candidate
page), procedures, evals, cases, agents (tool lists), ops (operating the library), metrics and
notifications. Access is reviews.access; refusals as responses are reviews.views.refusals."""
