"""The CAST AI ``PodMutation`` preset (``pod-mutations.cast.ai/v1``, cluster-scoped).

PodMutations compile, as a set, into one MutatingPolicy each (:mod:`.compiler`): filters become CEL
conditions (:mod:`.filters`), the most specific matching PodMutation wins (:mod:`.specificity`),
patches become CEL ``JSONPatch`` literals (:mod:`.patches`), and spot/distribution settings use the
shared placement building blocks. The model and its CRD-like validation are in :mod:`.model`.
"""
