@_exported public import CourierCore
@_exported public import HTTPTypes
