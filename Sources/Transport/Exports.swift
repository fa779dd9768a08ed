@_exported public import HTTPTypes
