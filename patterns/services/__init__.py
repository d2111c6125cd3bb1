"""Services of the success-pattern store: store (learn, recall, reuse, refine, aging),
evaluation (judges, rubric), feedback (clusters, prompt evolution), compose, promotion."""
