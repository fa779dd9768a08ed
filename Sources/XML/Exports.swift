// CourierXML: XML responses decoded into Decodable models (XMLCoder), as a separate product.
@_exported public import CourierServices
@_exported public import XMLCoder
