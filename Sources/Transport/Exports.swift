@_exported public import HTTPTypes
@_exported public import CourierCore
