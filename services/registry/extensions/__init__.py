"""API extensions: CustomResourceDefinitions (their resource and strategy), the
custom resources each served CRD version becomes, the checks of a CRD's
structural schema, and the JSONPath its printer columns use.
"""
